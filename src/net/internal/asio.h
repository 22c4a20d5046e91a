// The Boost.Asio/Beast headers and aliases the net layer's .cc files share.
// Private to src/net: nothing outside it may include this (compile time).
#pragma once

#define BOOST_BEAST_USE_STD_STRING_VIEW 1

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

namespace omni::net_internal {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// Awaitable completion that returns error codes instead of throwing, so
// expected network failures never become exceptions.
inline constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

// Reason phrase for a status line; RFC 9112 lets it be empty, but peers and
// people read it.
std::string_view ReasonPhrase(int status);

}  // namespace omni::net_internal
