/* trace_uprobe.bpf.c - the capture at a uprobe or uretprobe: the
 * registers are the probe's own (user mode), the stack is read from its
 * rsp. One program for both kinds; the attachment's cookie names the
 * event. */
#include "bpf/trace_common.bpf.h"

SEC("uprobe")
int trace_uprobe(struct pt_regs *ctx)
{
	struct ss_scratch *s;

	if (!current_traced() || !(s = scratch_get()))
		return 0;
	rec_header(&s->rec, TRACE_REC_EVENT);
	stacksnap_capture_regs(&s->rec.cap, ctx);
	return emit_event(s, bpf_get_attach_cookie(ctx), NULL);
}
