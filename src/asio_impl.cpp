// The one translation unit that compiles Asio and Beast (separate compilation keeps builds fast).
#include <utility>

#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
