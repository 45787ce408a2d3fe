#pragma once
/// A number with one decimal, as printf's "%.1f" writes it, from the double's bits: printf's
/// exact multi-precision path took ~1,600 instructions a number (callgrind), ~40 K for the usage
/// table that ends an 8-worker run; this takes ~200.

#include <string>

namespace ptrun::launcher {

/// `v` with one decimal, exactly as snprintf("%.1f") writes it (the double's exact value rounded
/// to the nearest tenth, a tie to the even tenth): "0.2" for 0.25, "0.1" for 0.15 (just below).
std::string one_decimal_text(double v);

}  // namespace ptrun::launcher
