/* A registry and a store for the daemon's fuzz drivers, so that they run the
 * real HTTP layer and dispatcher (http/, dispatch.c) without SQLite or sandboxes:
 *   sandbox "sbxrun" (running, X-Access-Token "tok"), "sbxpaused" (paused);
 *   API key "hutch_fuzzkey" -> team "default"; key "broken" -> store error. */
#ifndef HUTCH_TESTS_FUZZ_DAEMON_FAKES_H
#define HUTCH_TESTS_FUZZ_DAEMON_FAKES_H

struct hu_registry *fake_registry(void);
struct hu_store *fake_store(void);

#endif
