#pragma once
/// CLI11 without the static std::ios_base::Init that <iostream> puts in every translation unit
/// including it (GCC 12's libstdc++): that object builds the eight standard streams and the
/// classic locale (~30 facets) at every start of ptrun, ~0.1 ms and ~25 page faults, for a
/// launch that never writes through iostreams. CLI11 names std::cout and std::cerr only in
/// App::exit, deprecated and retired options and its Timer, none of which ptrun uses; whoever
/// runs CLI11 constructs an ios_base::Init first (cli11_streams), the standard's way to make the
/// streams usable. Elsewhere than libstdc++, <iostream> is included as usual.

#include <istream>
#include <ostream>

#if defined(__GLIBCXX__) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1  // <iostream>'s guard: what it declares is declared here, but Init
namespace std {
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
}  // namespace std
#endif

#include <CLI/CLI.hpp>

namespace ptrun::launcher {

/// Makes the standard streams usable before CLI11 runs (once; cheap after the first call).
inline void cli11_streams() { static const std::ios_base::Init streams; }

}  // namespace ptrun::launcher
