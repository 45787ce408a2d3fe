#include "ptrun/env/cuda_devices.hpp"

#include <catch2/catch.hpp>

using namespace ptrun::env;

namespace {

/// The ids a CUDA_VISIBLE_DEVICES value shows, joined: "" for none.
std::string shown(std::string_view value) {
    return cuda_visible_devices_value(parse_cuda_visible_devices(value));
}

std::vector<CudaDevice> ordinals(std::initializer_list<std::uint32_t> ids) {
    std::vector<CudaDevice> out;
    for (auto i : ids) out.push_back(CudaDevice{std::to_string(i), i});
    return out;
}

}  // namespace

TEST_CASE("CUDA_VISIBLE_DEVICES lists ordinals in the order CUDA enumerates them", "[env][cuda]") {
    CHECK(shown("0,1") == "0,1");
    CHECK(shown("2,1") == "2,1");
    CHECK(shown("3") == "3");
    auto devices = parse_cuda_visible_devices("4,0");
    REQUIRE(devices.size() == 2);
    CHECK(devices[0].ordinal == 4u);
    CHECK(devices[1] == CudaDevice{"0", 0u});
}

TEST_CASE("CUDA_VISIBLE_DEVICES ends at the first invalid entry", "[env][cuda]") {
    CHECK(shown("0,1,-1,2") == "0,1");  // CUDA's own example: 0,2,-1,1 shows 0 and 2
    CHECK(shown("0,2,-1,1") == "0,2");
    CHECK(shown("0,,1") == "0");
    CHECK(shown("1,GPU-8f6c2e0a") == "1");  // the first entry decides the kind
    CHECK(shown("GPU-8f6c2e0a,1") == "GPU-8f6c2e0a");
    CHECK(shown("GPU-8f6c2e0a,MIG-0b1c") == "GPU-8f6c2e0a");
    CHECK(shown("0,99999999999,1") == "0");  // no node has that many devices
}

TEST_CASE("CUDA_VISIBLE_DEVICES values that show no device", "[env][cuda]") {
    for (const char* none : {"", "-1", "NoDevFiles", "-1,0", ",0", "GPU-", "none", "-3"}) {
        INFO(none);
        CHECK(parse_cuda_visible_devices(none).empty());
    }
}

TEST_CASE("CUDA_VISIBLE_DEVICES ordinals read like strtoul", "[env][cuda]") {
    CHECK(shown("1gpu2,2ampere") == "1,2");  // torch's own example of the driver's reading
    CHECK(shown(" 1, 2 ") == "1,2");
    CHECK(shown("+1") == "1");
    CHECK(shown("007") == "7");
}

TEST_CASE("a device named twice in CUDA_VISIBLE_DEVICES hides every device", "[env][cuda]") {
    CHECK(parse_cuda_visible_devices("0,0").empty());
    CHECK(parse_cuda_visible_devices("1,01").empty());
    CHECK(parse_cuda_visible_devices("GPU-a,GPU-b,GPU-a").empty());
    CHECK(shown("0,1,-1,1") == "0,1");  // the repeat lies past the end: not read
}

TEST_CASE("CUDA_VISIBLE_DEVICES UUIDs keep what was written", "[env][cuda]") {
    auto devices = parse_cuda_visible_devices("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,GPU-1a2b");
    REQUIRE(devices.size() == 2);
    CHECK(devices[0].id == "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6");
    CHECK_FALSE(devices[0].ordinal);
    CHECK(shown("MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2,MIG-9a") ==
          "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2,MIG-9a");
}

TEST_CASE("ordinals past the node's devices end the list", "[env][cuda]") {
    CHECK(cuda_visible_devices_value(limit_to_physical(parse_cuda_visible_devices("1,5,0"), 4)) ==
          "1");
    CHECK(cuda_visible_devices_value(limit_to_physical(parse_cuda_visible_devices("GPU-a"), 0)) ==
          "GPU-a");
}

TEST_CASE("without CUDA_VISIBLE_DEVICES a process sees every device of the node", "[env][cuda]") {
    CHECK(visible_cuda_devices({}, 3) == ordinals({0, 1, 2}));
    CHECK(visible_cuda_devices({}, 0).empty());
    CHECK(visible_cuda_devices({{"CUDA_VISIBLE_DEVICES", "2,0"}}, 3) == ordinals({2, 0}));
    CHECK(visible_cuda_devices({{"CUDA_VISIBLE_DEVICES", ""}}, 3).empty());
}

TEST_CASE("gpu: selections list device indexes and ranges", "[env][cuda]") {
    CHECK(parse_gpu_selection("1,3,5") == std::vector<int>{1, 3, 5});
    CHECK(parse_gpu_selection("5,1") == std::vector<int>{5, 1});
    CHECK(parse_gpu_selection("0-3") == std::vector<int>{0, 1, 2, 3});
    CHECK(parse_gpu_selection("6,0-1") == std::vector<int>{6, 0, 1});
    CHECK(parse_gpu_selection("2-2") == std::vector<int>{2});
}

TEST_CASE("gpu: selections refuse what names no device", "[env][cuda]") {
    CHECK_THROWS_WITH(parse_gpu_selection(""), Catch::Contains("no empty entry"));
    CHECK_THROWS_WITH(parse_gpu_selection("1,,2"), Catch::Contains("no empty entry"));
    CHECK_THROWS_WITH(parse_gpu_selection("1,1"), Catch::Contains("device 1 appears twice"));
    CHECK_THROWS_WITH(parse_gpu_selection("0-2,1"), Catch::Contains("device 1 appears twice"));
    CHECK_THROWS_WITH(parse_gpu_selection("-1"), Catch::Contains("device '-1'"));
    CHECK_THROWS_WITH(parse_gpu_selection("a"), Catch::Contains("device 'a' in 'a'"));
    CHECK_THROWS_WITH(parse_gpu_selection("+1"), Catch::Contains("expected a device index"));
    CHECK_THROWS_WITH(parse_gpu_selection("3-1"), Catch::Contains("range '3-1'"));
    CHECK_THROWS_WITH(parse_gpu_selection("1-"), Catch::Contains("device ''"));
    CHECK_THROWS_WITH(parse_gpu_selection("0-99999"), Catch::Contains("from 0 to 4095"));
}

TEST_CASE("a gpu: selection picks through the inherited CUDA_VISIBLE_DEVICES", "[env][cuda]") {
    auto visible = visible_cuda_devices({{"CUDA_VISIBLE_DEVICES", "4,5,6,7,0,1"}}, 8);
    auto picked = select_devices(visible, parse_gpu_selection("1,3,5"));
    CHECK(cuda_visible_devices_value(picked) == "5,7,1");

    auto uuids = parse_cuda_visible_devices("GPU-aa,GPU-bb,GPU-cc");
    CHECK(cuda_visible_devices_value(select_devices(uuids, {2, 0})) == "GPU-cc,GPU-aa");

    // Without CUDA_VISIBLE_DEVICES the indexes are the node's own devices.
    CHECK(cuda_visible_devices_value(select_devices(visible_cuda_devices({}, 8), {1, 3, 5})) ==
          "1,3,5");
    CHECK_THROWS_WITH(select_devices(visible, {6}),
                      "device 6 is not among the 6 devices this node shows (4,5,6,7,0,1)");
    CHECK_THROWS_WITH(select_devices({}, {0}),
                      "device 0 is not among the 0 devices this node shows (none)");
}

TEST_CASE("each worker sees every selected device, or only its own with a virtual local rank",
          "[env][cuda]") {
    auto picked = select_devices(parse_cuda_visible_devices("GPU-aa,GPU-bb,GPU-cc"), {2, 0});
    CHECK(worker_cuda_visible_devices(picked, 0, false) == "GPU-cc,GPU-aa");
    CHECK(worker_cuda_visible_devices(picked, 1, false) == "GPU-cc,GPU-aa");
    CHECK(worker_cuda_visible_devices(picked, 0, true) == "GPU-cc");
    CHECK(worker_cuda_visible_devices(picked, 1, true) == "GPU-aa");
    CHECK_THROWS_WITH(worker_cuda_visible_devices(picked, 2, true),
                      "local rank 2 has no device of its own: 2 devices (GPU-cc,GPU-aa)");
    CHECK(worker_cuda_visible_devices(ordinals({3, 4}), 1, true) == "4");
}
