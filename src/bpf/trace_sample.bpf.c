/* trace_sample.bpf.c - timed sampling (-F HZ): a software cpu-clock
 * perf event per CPU runs this program; a sample taken in user mode has
 * the interrupted registers, one taken in the kernel the registers saved
 * at the thread's last entry into it. */
#include "bpf/trace_common.bpf.h"

SEC("perf_event")
int trace_sample(struct bpf_perf_event_data *ctx)
{
	struct ss_scratch *s;

	if (!current_traced() || !(s = scratch_get()))
		return 0;
	rec_header(&s->rec, TRACE_REC_EVENT);
	/* The context allows only 8-byte loads of the registers. */
	if (*(volatile __u64 *)&ctx->regs.cs & 3)
		stacksnap_capture_regs(&s->rec.cap, (struct pt_regs *)&ctx->regs);
	else if (stacksnap_capture_task_regs(&s->rec.cap))
		return 0;
	return emit_event(s, bpf_get_attach_cookie(ctx), NULL);
}
