/* planted: nn including a header private to autograd */
#include "qkt_autograd.h"
#include "kernels.h"
