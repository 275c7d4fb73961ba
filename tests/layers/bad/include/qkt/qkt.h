/* planted: an umbrella that leaves out qkt_optim.h and qkt_stray.h */
#include "qkt_autograd.h"
#include "qkt_nn.h"
