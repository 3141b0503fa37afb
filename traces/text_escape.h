// Escaping for the text formats traces are exported to: JSON strings, CSV fields, HTML text.
#pragma once

#include <string>
#include <string_view>

namespace mimic::traces {

// The body of a JSON string (no quotes): ", \ and control characters escaped.
void append_json_escaped(std::string& out, std::string_view s);
std::string json_quoted(std::string_view s);  // with quotes
// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break.
std::string csv_field(std::string_view s);
// HTML text or attribute value: & < > " ' escaped.
std::string html_escape(std::string_view s);

}  // namespace mimic::traces
