/* help.h - the --help texts of stacksnap and its subcommands, generated at
 * build time (scripts/gen-help.py) from tools/stacksnap/help/NAME.txt,
 * the same files the stacksnap(1) man page is generated from. */
#ifndef STACKSNAP_TOOL_HELP_H
#define STACKSNAP_TOOL_HELP_H

/* The text of "stacksnap" (with the list of subcommands) or of a
 * subcommand; "" when there is none. */
const char *help_text(const char *name);

#endif
