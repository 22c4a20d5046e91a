// The ping endpoint of http_bench_server on bare Beast (one io thread, C++20
// coroutines, no routing, metrics or request ids): the ceiling the omniserve
// server is compared against in wrk.sh. Prints "port=<n>", serves until killed.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

asio::awaitable<void> Session(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> req;
    auto [ec, n] = co_await http::async_read(stream, buffer, req, kNoThrow);
    if (ec) break;
    http::response<http::string_body> res{http::status::ok, req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = R"({"object":"pong"})";
    res.prepare_payload();
    auto [wec, wn] = co_await http::async_write(stream, res, kNoThrow);
    if (wec || !res.keep_alive()) break;
  }
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

asio::awaitable<void> Listen(tcp::acceptor& acceptor) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kNoThrow);
    if (ec) continue;
    socket.set_option(tcp::no_delay(true));
    asio::co_spawn(acceptor.get_executor(), Session(std::move(socket)), asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  unsigned short port = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--port") port = static_cast<unsigned short>(std::atoi(argv[i + 1]));
  }
  asio::io_context ioc(1);
  tcp::acceptor acceptor(ioc, {asio::ip::make_address("127.0.0.1"), port});
  std::printf("port=%u\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  asio::co_spawn(ioc, Listen(acceptor), asio::detached);
  ioc.run();
  return 0;
}
