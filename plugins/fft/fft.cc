#include "plugins/fft/fft.h"
