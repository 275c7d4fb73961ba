/* planted: data including optim, a layer it does not link */
#include "qkt_optim.h"
