// Includes the header that includes it: the walk must end.
#pragma once
#include "inner.cuh"
