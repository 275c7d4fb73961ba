/* public header of optim */
#include "qkt_autograd.h"
