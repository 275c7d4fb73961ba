/* The CLI's subcommand table and the helpers the cmd_*.c files share. */
#ifndef QKT_CLI_H
#define QKT_CLI_H

typedef int (*qkt_command_fn)(int argc, char **argv); /* argv[0] is the command name */
typedef struct {
    const char *name;
    qkt_command_fn fn;
    const char *help;
} qkt_command;

#define QKT_COMMAND(name, fn, help) int fn(int argc, char **argv);
#include "commands.def"
#undef QKT_COMMAND



#endif
