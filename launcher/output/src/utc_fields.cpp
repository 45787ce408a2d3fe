#include "ptrun/launcher/output/utc_fields.hpp"

namespace ptrun::launcher {

UtcFields utc_fields(std::chrono::system_clock::time_point time) {
    using namespace std::chrono;
    const auto ms = floor<milliseconds>(time);
    const auto day = floor<days>(ms);
    const year_month_day ymd{day};
    const hh_mm_ss hms{ms - day};
    UtcFields out;
    out.year = static_cast<int>(ymd.year());
    out.month = static_cast<unsigned>(ymd.month());
    out.day = static_cast<unsigned>(ymd.day());
    out.hour = static_cast<unsigned>(hms.hours().count());
    out.minute = static_cast<unsigned>(hms.minutes().count());
    out.second = static_cast<unsigned>(hms.seconds().count());
    out.millisecond = static_cast<unsigned>(hms.subseconds().count());
    return out;
}

}  // namespace ptrun::launcher
