#pragma once
// Precompiled header of the test files that use no LibTorch (tests/CMakeLists.txt, attnlab_torch_free_tests):
// Qt Test and nlohmann JSON cost 5.7 s of CPU to parse in each of them, loading this header well under one.
#include <QProcess>
#include <QString>
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>
