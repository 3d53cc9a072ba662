#include "plugins/dnn/dnn.h"
