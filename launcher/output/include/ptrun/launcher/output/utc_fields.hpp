#pragma once
/// A time's UTC calendar fields from the proleptic Gregorian calendar alone: gmtime_r reads the
/// time zone file (/etc/localtime) the first time it runs, tens of microseconds of every launch.

#include <chrono>

namespace ptrun::launcher {

struct UtcFields {
    int year = 1970;
    unsigned month = 1;   ///< 1-12
    unsigned day = 1;     ///< 1-31
    unsigned hour = 0;    ///< 0-23
    unsigned minute = 0;  ///< 0-59
    unsigned second = 0;  ///< 0-59 (UTC as the system clock counts it: no leap seconds)
    unsigned millisecond = 0;
};

/// `time`'s fields in UTC, without the C library's time zone code.
UtcFields utc_fields(std::chrono::system_clock::time_point time);

}  // namespace ptrun::launcher
