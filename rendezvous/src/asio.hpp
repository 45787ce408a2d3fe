#pragma once
/// The one place that includes Boost.Asio. Boost 1.74 Asio under g++ 12 in C++20 mode needs
/// <utility> before its coroutine support header.

#include <utility>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
