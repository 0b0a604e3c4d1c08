#include "cli/plan/shell_words.h"

#include <algorithm>

#include "trainrun/error.h"

namespace trainrun::cli {
namespace {

// One double-quoted run starting after the opening quote; returns the
// index of the closing quote.
std::size_t read_double_quoted(std::string_view text, std::size_t i, std::string& word) {
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') return i;
    if (c == '\\' && i + 1 < text.size() && std::string_view("\"\\$`\n").find(text[i + 1]) != std::string_view::npos) {
      if (text[++i] != '\n') word += text[i];
      continue;
    }
    word += c;
  }
  throw Error(Error::Code::InvalidArgument, "unterminated \" quote in: " + std::string(text));
}

// The words quoted by `quote`, a blank apart.
std::string join(const std::vector<std::string>& words, std::string (*quote)(std::string_view)) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + quote(w);
  return out;
}

}  // namespace

std::string shell_quote(std::string_view word) {
  const bool safe = !word.empty() && word.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") ==
                                         std::string_view::npos;
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) { return join(words, shell_quote); }

std::string display_quote(std::string_view word) {
  const bool control = std::any_of(word.begin(), word.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (!control) return shell_quote(word);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "$'";
  for (char c : word) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') out += std::string("\\") + c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (u < 0x20 || u == 0x7f) out += std::string("\\x") + kHex[u >> 4] + kHex[u & 0xf];
    else out.push_back(c);
  }
  return out + "'";
}

std::string display_join(const std::vector<std::string>& words) { return join(words, display_quote); }

std::vector<std::string> split_shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;  // a line continuation joins, whether inside a word or between words
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const std::size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos)
        throw Error(Error::Code::InvalidArgument, "unterminated ' quote in: " + std::string(text));
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      i = read_double_quoted(text, i + 1, word);
    } else if (c == '\\') {
      if (i + 1 == text.size())
        throw Error(Error::Code::InvalidArgument, "trailing backslash in: " + std::string(text));
      word += text[++i];
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace trainrun::cli
