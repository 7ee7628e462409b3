/* trace_tp.bpf.c - the capture at a tracepoint: the traced thread's user
 * registers (saved when it entered the kernel), its user stack and the
 * tracepoint's own record (fields by the format file). One program,
 * attached once per tracepoint; the attachment's cookie names the event. */
#include "bpf/trace_common.bpf.h"

SEC("tracepoint")
int trace_tp(void *ctx)
{
	struct ss_scratch *s;

	if (!current_traced() || trace_exp == 1 || !(s = scratch_get()))
		return 0;
	rec_header(&s->rec, TRACE_REC_EVENT);
	if (stacksnap_capture_task_regs(&s->rec.cap))
		return 0;
	return emit_event(s, bpf_get_attach_cookie(ctx), ctx);
}
