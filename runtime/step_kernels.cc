#include "runtime/step_kernels.h"

namespace kiln::runtime {
namespace {

constexpr char kKilnPtx[] = R"(.version 7.0
.target sm_75
.address_size 64

.visible .entry kiln_advance_step(
	.param .u64 kiln_advance_step_param_0,
	.param .u64 kiln_advance_step_param_1,
	.param .u64 kiln_advance_step_param_2,
	.param .u64 kiln_advance_step_param_3
)
{
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<11>;

	ld.param.u64 	%rd1, [kiln_advance_step_param_0];
	ld.param.u64 	%rd2, [kiln_advance_step_param_1];
	ld.param.u64 	%rd3, [kiln_advance_step_param_2];
	ld.param.u64 	%rd7, [kiln_advance_step_param_3];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
	cvta.to.global.u64 	%rd8, %rd7;
	ld.global.u32 	%r1, [%rd6];
	st.global.u32 	[%rd4], %r1;
	ld.global.u32 	%r2, [%rd5];
	add.s32 	%r3, %r2, 1;
	st.global.u32 	[%rd5], %r3;
	and.b32 	%r4, %r2, 1;
	mul.wide.u32 	%rd9, %r4, 8;
	add.s64 	%rd10, %rd8, %rd9;
	st.global.v2.u32 	[%rd10], {%r2, %r1};
	ret;
}

.visible .entry kiln_hold(
	.param .u64 kiln_hold_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [kiln_hold_param_0];
	mov.u64 	%rd2, %globaltimer;
WAIT:
	mov.u64 	%rd3, %globaltimer;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	WAIT;
	ret;
}
)";

}  // namespace

absl::Span<const uint8_t> StepKernelsPtx() {
  return {reinterpret_cast<const uint8_t*>(kKilnPtx), sizeof(kKilnPtx) - 1};
}

}  // namespace kiln::runtime
