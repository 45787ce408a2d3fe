#include "ptrun/launcher/membership/admission.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace ptrun::launcher {
namespace {

using nlohmann::json;

constexpr const char* kPlacement = "placement";
constexpr const char* kRefused = "refused";

struct Encoder {
    json operator()(const NodePlacement& p) const { return {{kPlacement, json::parse(encode(p))}}; }
    json operator()(const AdmissionRefused& r) const { return {{kRefused, r.message}}; }
};

[[noreturn]] void malformed(const std::string& why) {
    throw std::runtime_error("malformed admission: " + why);
}

}  // namespace

std::string encode(const Admission& admission) { return std::visit(Encoder{}, admission).dump(); }

Admission decode_admission(const std::string& text) {
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded()) malformed("not JSON");
    if (!j.is_object()) malformed("expected a JSON object, got " + std::string(j.type_name()));
    const bool placed = j.contains(kPlacement);
    const bool refused = j.contains(kRefused);
    if (placed && refused) malformed("both 'placement' and 'refused' are present");
    if (!placed && !refused) malformed("neither 'placement' nor 'refused' is present");
    if (refused) {
        const auto& message = j.at(kRefused);
        if (!message.is_string())
            malformed("'refused' is " + std::string(message.type_name()) + ", expected a string");
        return AdmissionRefused{message.get<std::string>()};
    }
    const auto& placement = j.at(kPlacement);
    if (!placement.is_object())
        malformed("'placement' is " + std::string(placement.type_name()) + ", expected an object");
    try {
        return decode_placement(placement.dump());
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string("admission: ") + e.what());
    }
}

}  // namespace ptrun::launcher
