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

/* The CLI's messages on stderr (main.c): printf's text with its control characters
 * escaped, a newline as the two characters \n and any other as \xHH, except a newline
 * that ends the text: a message is one line whatever path or value it quotes. Returns
 * the formatted length, as fprintf. */
int qkt_cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* sigaction(sig, sa) unless sig is ignored already (nohup): main.c. */
void qkt_cli_sigaction(int sig, const struct sigaction *sa);

#ifdef __cplusplus
}
#endif
#endif
