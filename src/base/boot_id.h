/* boot_id.h - the host's boot id (/proc/sys/kernel/random/boot_id), which
 * names one boot: LTTng's clock uuid, kept in events files and CTF traces
 * so that traces of one boot are known to share a clock. */
#ifndef SS_BASE_BOOT_ID_H
#define SS_BASE_BOOT_ID_H

/* Reads the boot id ("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx") into out.
 * Returns 0, or -errno with out set to "". */
int boot_id_read(char out[37]);

#endif
