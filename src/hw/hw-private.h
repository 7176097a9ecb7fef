/* What hw.c and hw-check.c share. */
#pragma once

#include "rok/core.h"
#include "rok/hw.h"

/* Appends to `warnings` (char *) a sentence per value of `hw` that parses
 * but is implausible as written in `doc`. */
void hw_check_plausible(const RokHw *hw, const RokJsonDoc *doc, GPtrArray *warnings);
