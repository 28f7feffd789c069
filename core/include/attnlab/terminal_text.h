#pragma once
// Text from a file or the command line as a terminal may show it: nothing in it acts on the
// terminal (an escape sequence recolouring, moving the cursor or retitling the window, a newline
// forging a line of output) or hides what it is.
#include <string>
#include <string_view>

namespace attnlab {

// `text` with every control character escaped: newline, carriage return and tab as \n \r \t,
// other C0 controls and DEL as \xNN (ESC: \x1B), C1 controls (U+0080-U+009F), the line and
// paragraph separators and the bidirectional controls as \u{NNNN}, bytes that are not well-formed
// UTF-8 as \xNN; everything else as it is, backslashes too, so that a message whose quotes were
// escaped already (util::forMessage in core) reads the same. Never cut.
std::string escapedForTerminal(std::string_view text);

}  // namespace attnlab
