// Appends RESP2 values (and RESP3 aggregate headers) to an output buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace corral::resp {

void append_simple(std::string& out, std::string_view text);  // +text\r\n
void append_error(
    std::string& out,
    std::string_view message);  // -message\r\n (message has its prefix, e.g. "ERR ...")
void append_integer(std::string& out, std::int64_t value);
void append_bulk(std::string& out, std::string_view value);
// Text meant for people (INFO, CLIENT LIST): RESP3's verbatim string of format "txt" when
// `protocol` is 3, else a bulk string, as Redis's addReplyVerbatim.
void append_text(std::string& out, std::string_view text, int protocol);
// One name/value entry of a flat field list (admin replies): the name as a bulk string, then the
// value as a bulk string or an integer.
void append_field(std::string& out, std::string_view name, std::string_view value);
void append_field(std::string& out, std::string_view name, std::int64_t value);
void append_null(std::string& out);        // $-1\r\n
void append_null_array(std::string& out);  // *-1\r\n
void append_array_header(std::string& out, std::size_t count);
// "<type><count>\r\n" for any aggregate: '*', RESP3's '%' (count = pairs), '~', '>', '|'.
void append_header(std::string& out, char type, std::size_t count);
// A command as a multibulk request.
void append_command(std::string& out, std::span<const std::string_view> argv);

}  // namespace corral::resp
