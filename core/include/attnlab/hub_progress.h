#pragma once
// A download's progress in words, one line, for the terminal (attnlab-cli) and the window's download panel:
// "model.safetensors · 45.2 of 298.0 MB · 12.3 MB/s · 0:21 left · file 3 of 7" ("45.2 MB so far" when no
// size was said).

#include <attnlab/hub.h>

#include <cstdint>
#include <string>

namespace attnlab {

// "850 kB", "45.2 MB", "2.46 GB" (decimal units, as the hub shows sizes).
std::string byteSizeText(int64_t bytes);
// The line above; "Asking which files the model has…" before the first file (files_total 0).
std::string describeHubProgress(const HubProgress& p);

}  // namespace attnlab
