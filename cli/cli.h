/* The CLI's subcommand table: one qkt_cmd_<name> per cli/cmd_<name>.c (commands.def). */
#ifndef QKT_CLI_H
#define QKT_CLI_H
#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*qkt_command_fn)(int argc, char **argv); /* argv[0] is the command name */
typedef struct {
    const char *name;
    qkt_command_fn fn;
    const char *help;
} qkt_command;

#define QKT_COMMAND(name, fn, help) int fn(int argc, char **argv);
#include "commands.def"
#undef QKT_COMMAND

/* sigaction(sig, sa) unless sig is ignored already (nohup): main.c. */
void qkt_cli_sigaction(int sig, const struct sigaction *sa);

#ifdef __cplusplus
}
#endif
#endif
