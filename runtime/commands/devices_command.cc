// kiln devices: what the driver sees; the quickest check that a machine can
// run kiln at all.
#include <cstdio>

#include "absl/strings/str_format.h"
#include "runtime/commands/commands.h"
#include "runtime/cuda/driver.h"
#include "runtime/preflight.h"
#include "support/command_line.h"

namespace kiln::runtime {

constexpr char kDevicesUsage[] = R"(usage: kiln devices

Prints the CUDA driver version and every GPU: name, sm target, SM count,
memory. Fails with a clear message where no driver or GPU is present.
)";

int RunDevices(const std::vector<std::string>& args) {
  ParsedArgs parsed = ParseCommandArgs("kiln", "devices", args, kDevicesUsage, {});
  if (parsed.exit_code) return *parsed.exit_code;
  if (!parsed.positional.empty())
    return FailCommand("kiln", "devices", UsageError("unexpected argument '" + parsed.positional[0] + "'"));
  absl::StatusOr<const cuda::Driver*> driver = cuda::Driver::Get();
  if (!driver.ok()) return FailCommand("kiln", "devices", driver.status());
  const int v = (*driver)->version();
  std::printf("CUDA driver %d.%d, %d GPU(s)\n", v / 1000, v % 1000 / 10, (*driver)->device_count());
  for (int i = 0; i < (*driver)->device_count(); ++i) {
    absl::StatusOr<cuda::DeviceInfo> d = cuda::GetDeviceInfo(**driver, i);
    if (!d.ok()) return FailCommand("kiln", "devices", d.status());
    std::printf("  %d: %s, %s, %d SMs, %s, %d KB shared memory per block\n", i, d->name.c_str(), d->sm().c_str(),
                d->sm_count, FormatBytes(d->total_memory).c_str(), d->max_shared_per_block_optin / 1024);
  }
  return 0;
}

}  // namespace kiln::runtime
