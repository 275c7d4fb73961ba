/* planted: autograd reaching up into nn */
#include "qkt_nn.h"
