/* Fixture for the layer check: a tree with two planted violations. */
#include "kernels.h"
