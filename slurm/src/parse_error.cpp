#include "ptrun/slurm/parse_error.hpp"

namespace ptrun::slurm {
namespace {

std::string message(std::string_view subject, std::string_view reason, std::size_t pos) {
    std::string text;
    text.append(subject).append(": ").append(reason);
    if (pos != ParseError::kNoPos) text.append(" at offset ").append(std::to_string(pos));
    return text;
}

}  // namespace

ParseError::ParseError(std::string_view subject, std::string_view reason_text, std::size_t at)
    : std::runtime_error(message(subject, reason_text, at)), pos(at), reason(reason_text) {}

}  // namespace ptrun::slurm
