/* The `hutch` command line: one file per verb, dispatched from main.c
 * (hutch-full); front.c is the `hutch` binary itself (`run`, else hutch-full). */
#ifndef HUTCH_CLI_CLI_H
#define HUTCH_CLI_CLI_H

int cmd_run(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_keys(int argc, char **argv);
int cmd_node(int argc, char **argv);
int cmd_template(int argc, char **argv);
/* `hutch template rm` (template_rm.c) */
int cmd_template_rm(int argc, char **argv);

/* Print "hutch: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
