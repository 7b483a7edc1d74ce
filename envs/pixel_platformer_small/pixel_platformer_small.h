/* pixel_platformer_small — pixel_platformer with its own ini: a 48x48 grayscale picture (a tile
 * is 3 pixels), about a sixth of the default's 64x64x3 bytes per step, for quick training runs.
 * The same header as envs/pixel_platformer; its own name gives it its own ini, checkpoints and
 * logs. */
#include "../pixel_platformer/pixel_platformer.h"
