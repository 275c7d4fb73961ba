/* public header of nn, planted: it includes a private header of autograd */
#include "qkt_autograd.h"
#include "kernels.h"
