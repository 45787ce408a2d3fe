#include "ptrun/env/device_kind.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::env;

namespace {

std::string shown(DeviceKind kind, std::string_view value) {
    return cuda_visible_devices_value(parse_visible_devices(kind, value));
}

std::string visible(DeviceKind kind, const EnvMap& env, std::vector<std::uint32_t> ids) {
    return cuda_visible_devices_value(visible_devices(kind, env, ids));
}

}  // namespace

TEST_CASE("each kind has torch's name and its vendor's visibility variable", "[env][devices]") {
    CHECK(torch_name(DeviceKind::NvidiaGpu) == "gpu");
    CHECK(torch_name(DeviceKind::AmdGpu) == "gpu");
    CHECK(torch_name(DeviceKind::IntelGpu) == "xpu");
    CHECK(torch_name(DeviceKind::Gaudi) == "hpu");
    CHECK(torch_name(DeviceKind::AscendNpu) == "npu");
    CHECK(visibility_variable(DeviceKind::NvidiaGpu) == "CUDA_VISIBLE_DEVICES");
    CHECK(visibility_variable(DeviceKind::AmdGpu) == "HIP_VISIBLE_DEVICES");
    CHECK(visibility_variable(DeviceKind::IntelGpu) == "ZE_AFFINITY_MASK");
    CHECK(visibility_variable(DeviceKind::Gaudi) == "HABANA_VISIBLE_MODULES");
    CHECK(visibility_variable(DeviceKind::AscendNpu) == "ASCEND_RT_VISIBLE_DEVICES");
}

TEST_CASE("HIP reads HIP_VISIBLE_DEVICES first, then CUDA_VISIBLE_DEVICES", "[env][devices]") {
    CHECK(visible(DeviceKind::AmdGpu, {}, {0, 1, 2, 3}) == "0,1,2,3");
    CHECK(visible(DeviceKind::AmdGpu, {{"CUDA_VISIBLE_DEVICES", "2,3"}}, {0, 1, 2, 3}) == "2,3");
    EnvMap both{{"CUDA_VISIBLE_DEVICES", "2,3"}, {"HIP_VISIBLE_DEVICES", "1"}};
    CHECK(visibility_variable_set(DeviceKind::AmdGpu, both) == "HIP_VISIBLE_DEVICES");
    CHECK(visible(DeviceKind::AmdGpu, both, {0, 1, 2, 3}) == "1");
    // Ordinals past the node's devices end the list, as the runtime's do.
    CHECK(visible(DeviceKind::AmdGpu, {{"HIP_VISIBLE_DEVICES", "1,7,0"}}, {0, 1, 2, 3}) == "1");
    CHECK(visibility_variable_set(DeviceKind::IntelGpu, both) == std::nullopt);
}

TEST_CASE("ROCR_VISIBLE_DEVICES is read apart, as the runtime below HIP", "[env][devices]") {
    CHECK_FALSE(parse_rocr_visible_devices({}));
    auto rocr = parse_rocr_visible_devices({{"ROCR_VISIBLE_DEVICES", "2,GPU-4b2c"}});
    REQUIRE(rocr);
    CHECK(cuda_visible_devices_value(*rocr) == "2");  // the kind is set by the first entry
    CHECK(cuda_visible_devices_value(*parse_rocr_visible_devices(
              {{"ROCR_VISIBLE_DEVICES", "GPU-4b2c,GPU-aa"}})) == "GPU-4b2c,GPU-aa");
}

TEST_CASE("ZE_AFFINITY_MASK lists devices and sub-devices up to a malformed entry",
          "[env][devices]") {
    CHECK(shown(DeviceKind::IntelGpu, "0,1") == "0,1");
    CHECK(shown(DeviceKind::IntelGpu, "1.0,0.1") == "1.0,0.1");
    CHECK(shown(DeviceKind::IntelGpu, "0,x,1") == "0");
    CHECK(shown(DeviceKind::IntelGpu, "0, 1") == "0");
    CHECK(shown(DeviceKind::IntelGpu, "1,1") == "1");
    CHECK(shown(DeviceKind::IntelGpu, "") == "");
    auto sub = parse_visible_devices(DeviceKind::IntelGpu, "3.1");
    REQUIRE(sub.size() == 1);
    CHECK(sub[0].ordinal == 3u);  // placed by its card
}

TEST_CASE("Ascend and Gaudi lists end at the first entry that is not an id", "[env][devices]") {
    // CANN's own example: "1, 2,3" shows device 1 only.
    CHECK(shown(DeviceKind::AscendNpu, "1, 2,3") == "1");
    CHECK(shown(DeviceKind::AscendNpu, "1,3,8") == "1,3,8");
    CHECK(visible(DeviceKind::AscendNpu, {{"ASCEND_RT_VISIBLE_DEVICES", "1,3,8"}},
                  {0, 1, 2, 3, 4, 5, 6, 7}) == "1,3");
    CHECK(shown(DeviceKind::Gaudi, "4,5,-1") == "4,5");
    CHECK(shown(DeviceKind::Gaudi, "0.1") == "");
}

TEST_CASE("Gaudi's devices are named by module id, not by index", "[env][devices]") {
    // Modules 2 and 6 on a node whose cards enumerate as 6, 2.
    CHECK(visible(DeviceKind::Gaudi, {}, {6, 2}) == "6,2");
    CHECK(visible(DeviceKind::Gaudi, {{"HABANA_VISIBLE_MODULES", "2"}}, {6, 2}) == "2");
    CHECK(visible(DeviceKind::Gaudi, {{"HABANA_VISIBLE_MODULES", "0,2"}}, {6, 2}) == "");
}
