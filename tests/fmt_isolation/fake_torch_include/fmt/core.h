// Not fmt (see format.h).
#pragma once
#include "format.h"
