// Words the way a POSIX shell reads them: quoting for the commands trainrun
// prints (--dry-run, --verbose) so that they can be pasted back as they are,
// and splitting of option strings like --mpi-args. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainrun::cli {

// 'it'\''s' style quoting, and none for words made of safe characters only.
// POSIX: what a remote sh runs.
std::string shell_quote(std::string_view word);
std::string shell_join(const std::vector<std::string>& words);
// For what trainrun prints (--dry-run, --verbose): shell_quote, but a word
// with a control character (a newline, an escape sequence) is bash's
// $'...' with escapes, so that it can neither split nor colour the line and
// still pastes back into bash as the same word.
std::string display_quote(std::string_view word);
std::string display_join(const std::vector<std::string>& words);

// Words as POSIX sh splits them, without expansions: blanks separate,
// '...' is literal, "..." honours \" \\ \$ \` and \newline, a backslash
// outside quotes escapes the next character. Throws Error(InvalidArgument)
// on an unterminated quote or a trailing backslash.
std::vector<std::string> split_shell_words(std::string_view text);

}  // namespace trainrun::cli
