// The unit that owns torch_free_pch.h's precompiled header (tests/CMakeLists.txt); nothing of its own.
