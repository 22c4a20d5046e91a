// The images of a chat answer: the LLM's image blocks found, decoded and put
// in their place, so that no image token ever reaches the client
// (docs/API.md, "Image output").
//
//   VisionTextScrubber   text fed in pieces (stream deltas) loses every image
//                        block (<|discrete_image_start|> .. <|discrete_image_end|>,
//                        handed back whole) and every stray <|vision...|> or
//                        image marker token; text that may start one is held
//                        back until it is known
//   ImageAnswerWriter    a ResponseWriter in front of the client's: the LLM's
//                        answer, relayed to it as to the client, comes out
//                        with its images. A whole answer (chat.completion) is
//                        held until its images are decoded, concurrently; a
//                        stream passes its text deltas on as they come,
//                        holds back the image tool calls, starts each decode
//                        as soon as its block is complete, sends each image as
//                        a further delta, and holds a choice's finish (and
//                        [DONE]) until its images are out.
//
// An image is answered the way OmniServe answers it: the tool call stays,
// its argument replaced by the image's URL
// ({"discrete_image_token": "<url>"}), and the message gains a
// "content_parts" list with an {"type": "image_url", "image_url": {"url"}}
// part (after a text part holding the content, if any); a stream's image
// delta carries both. An image block written in the content rather than in
// a call is decoded the same way (an image_url part, no call); blocks in
// the reasoning are dropped. A failed image is the request's OpenAI error
// (a stream: an error event, then [DONE]); with on_error "text" the answer
// keeps its text and the choice gets {"error": {"message", "code"}}.
//
// Thread-safety: VisionTextScrubber is not thread-safe. ImageAnswerWriter is
// driven by the relay on one thread while decodes finish on others; it locks.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "net/http_server.h"
#include "services/orchestrator/image_stage.h"

namespace omni::orchestrator {

class VisionTextScrubber {
 public:
  struct Out {
    std::string text;                 // to pass on
    std::vector<std::string> blocks;  // complete image blocks, markers included
    bool dropped_open_block = false;  // Finish: a block never closed (cut by max_tokens) was dropped
  };
  Out Push(std::string_view piece);
  // The end of the text: held text that is no token is released.
  Out Finish();
  // Text is held back (a possible token start or an open block).
  bool holding() const { return !held_.empty() || in_block_; }

 private:
  void Scan(Out* out);
  std::string held_;   // unexamined text from a possible marker on
  bool in_block_ = false;
  std::string block_;  // the open block so far
};

class ImageAnswerWriter final : public ResponseWriter, public std::enable_shared_from_this<ImageAnswerWriter> {
 public:
  // Starts one decode; `done` may run on any thread, exactly once.
  using DecodeFn =
      std::function<void(std::string tokens, std::function<void(StatusOr<GeneratedImage>)> done)>;

  // `on_client_gone` (may be empty) runs when the client leaves: it cancels
  // the decodes still running.
  ImageAnswerWriter(std::shared_ptr<ResponseWriter> client, DecodeFn decode, bool errors_as_text,
                    std::function<void()> on_client_gone = nullptr);
  ~ImageAnswerWriter() override;

  bool Send(HttpResponse response) override;
  bool StartStream(int status, HttpHeaders headers) override;
  bool Write(std::string_view chunk) override;
  bool WriteNoWait(std::string_view chunk) override { return Write(chunk); }
  bool Finish() override;
  bool client_gone() const override { return client_->client_gone(); }
  // The relay's callback, and then on_client_gone.
  void OnClientGone(std::function<void()> cb) override;
  const std::string& request_id() const override { return client_->request_id(); }

 private:
  struct Site;      // one image of the answer
  struct Choice;    // a streamed choice's state
  struct Whole;     // a whole answer waiting for its images
  // Starts the decodes of `sites`; never under mu_ (a decode may finish at once).
  void Launch(const std::vector<size_t>& sites, bool whole);
  void WholeImageDone(size_t site, StatusOr<GeneratedImage> image);
  // Streaming: one chunk's whole events edited; the decodes to start out.
  bool WriteLocked(std::string_view chunk, std::vector<size_t>* starts);
  // Under mu_.
  void EditEvent(std::string_view data);
  void Emit(std::string data);  // to the client, or held behind a pending image
  void ImageDone(size_t site, StatusOr<GeneratedImage> image);
  void Flush();  // the held events, once no image is pending
  Choice& ChoiceAt(int index);

  std::shared_ptr<ResponseWriter> client_;
  DecodeFn decode_;
  const bool errors_as_text_;
  const std::function<void()> on_client_gone_;

  std::mutex mu_;
  bool streaming_ = false;     // an event stream is being edited
  bool passthrough_ = false;   // a stream that is not a 200 event stream: relayed as is
  bool failed_ = false;        // an image failed: the stream was ended with the error
  bool finish_asked_ = false;  // Finish arrived while images were pending
  std::string partial_;        // bytes of an event not yet complete
  std::string header_;         // "id", "object", "created", "model" of the last chunk, as JSON members
  std::vector<std::unique_ptr<Choice>> choices_;
  std::vector<std::unique_ptr<Site>> sites_;
  std::unique_ptr<Whole> whole_;  // a whole answer waiting for its images
  std::vector<size_t> to_start_;  // sites found, their decodes not yet started
  int pending_ = 0;            // decodes running
  std::vector<std::string> held_;  // events behind a pending image, in order
};

}  // namespace omni::orchestrator
