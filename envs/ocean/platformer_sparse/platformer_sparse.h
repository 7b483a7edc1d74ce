/* platformer_sparse — the platformer on its level 1 with a sparse reward: Go-Explore's test env.
 *
 * The same header as envs/ocean/platformer (same physics, observation and actions); its own name gives
 * it its own ini (level = 1, progress_reward = 0, fail_penalty = 0: only the flag pays), its own
 * checkpoints and logs. The route to the flag is long and has a Z-shaped detour, so a policy that
 * never reaches the flag gets no signal at all; `go_explore` in the ini turns on starts from the
 * archive of reached cells (envs/c/goexplore.h).
 */
#include "../platformer/platformer.h"
