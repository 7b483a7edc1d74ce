/* pixel_platformer_small — pixel_platformer with its own ini: a 36x36 grayscale picture (a tile
 * is 2.25 pixels), about a tenth of the default's 64x64x3 bytes per step, for training runs on a
 * CPU adapter.
 * The same header as envs/ocean/pixel_platformer; its own name gives it its own ini, checkpoints and
 * logs. */
#include "../pixel_platformer/pixel_platformer.h"
