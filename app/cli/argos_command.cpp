#include "argos_command.h"

#include "cli_common.h"

#include <attnlab/argos_index.h>
#include <attnlab/errors.h>
#include <attnlab/hub_progress.h>
#include <attnlab/terminal_text.h>

#include <algorithm>
#include <iostream>

namespace attnlab_cli {

using attnlab::escapedForTerminal;

void addArgos(CLI::App& app, ArgosCommand& a) {
    a.cmd = app.add_subcommand("argos",
                               "Argos Translate packages: the index (ARGOS_PACKAGE_INDEX) and argos-translate's "
                               "packages folder (ARGOS_PACKAGES_DIR), shared with argospm");
    a.cmd->require_subcommand(1);
    a.list = a.cmd->add_subcommand("list", "The index's packages and the installed ones, with size, version, licence");
    a.list->add_option("--search", a.search,
                       "Only packages from or into a language: a code (de), a pair (en-de) or a name");
    a.list->add_flag("--installed", a.installed_only, "Only the installed packages (no index is asked)");
    a.install = a.cmd->add_subcommand("install", "Download a package of the index and install it");
    a.install->add_option("pair", a.name, "FROM-TO (en-de) or the package's code (translate-en_de)")->required();
    a.install->add_flag("--replace", a.replace, "Replace an installed package of the same pair");
    a.remove = a.cmd->add_subcommand("remove", "Remove an installed package");
    a.remove->add_option("pair", a.name, "FROM-TO (en-de) or the package's folder name")->required();
}

namespace {

std::string orDash(const std::string& s) { return s.empty() ? "-" : s; }

// `s` escaped and padded to `width` characters as a terminal shows them (UTF-8: "→" is one).
std::string cell(const std::string& s, size_t width) {
    std::string out = escapedForTerminal(s);
    const size_t shown = size_t(std::count_if(out.begin(), out.end(), [](char c) { return (c & 0xC0) != 0x80; }));
    return out + std::string(shown < width ? width - shown : 1, ' ');
}

void printRow(const std::string& pair, const std::string& languages, const std::string& version,
              const std::string& size, const std::string& licence, const std::string& installed) {
    std::cout << cell(pair, 11) << cell(languages, 36) << cell(version, 9) << cell(size, 10) << cell(licence, 13)
              << escapedForTerminal(installed) << "\n";
}

int listInstalled(const attnlab::ArgosOptions& options, const std::string& search,
                  const std::vector<attnlab::ArgosPackageEntry>& index) {
    int shown = 0;
    for (const attnlab::ArgosInstalledPackage& p : attnlab::installedArgosPackagesList(options)) {
        attnlab::ArgosPackageEntry as_entry;
        as_entry.from_code = p.from_code, as_entry.to_code = p.to_code;
        as_entry.from_name = p.from_name, as_entry.to_name = p.to_name;
        const bool in_index = std::any_of(
            index.begin(), index.end(), [&](const attnlab::ArgosPackageEntry& e) { return e.installed_dir == p.dir; });
        if (in_index || !attnlab::argosEntryMatches(as_entry, search)) continue;
        printRow(p.pair(), p.from_name + " → " + p.to_name, orDash(p.package_version), "-", "-",
                 p.folder + (index.empty() ? "" : " (not in the index)"));
        ++shown;
    }
    return shown;
}

int runList(const ArgosCommand& a, const attnlab::ArgosOptions& options) {
    std::vector<attnlab::ArgosPackageEntry> index;
    if (!a.installed_only) index = attnlab::fetchArgosIndex(options);
    std::cout << "index     " << (a.installed_only ? "(not asked)" : escapedForTerminal(options.index_url)) << "\n"
              << "packages  " << escapedForTerminal(options.packages_dir) << "\n";
    printRow("PAIR", "LANGUAGES", "VERSION", "SIZE", "LICENCE", "INSTALLED");
    int shown = 0;
    for (const attnlab::ArgosPackageEntry& e : index) {
        if (!attnlab::argosEntryMatches(e, a.search)) continue;
        const std::string installed =
            e.installed_dir.empty()
                ? ""
                : "yes, " + orDash(e.installed_version) + (e.installed_version == e.package_version ? "" : " (older)");
        printRow(e.pair(), e.from_name + " → " + e.to_name, orDash(e.package_version),
                 e.size >= 0 ? attnlab::byteSizeText(e.size) : "-", orDash(e.licence), installed);
        ++shown;
    }
    shown += listInstalled(options, a.search, index);
    if (shown == 0)
        std::cout << "(no package" << (a.search.empty() ? "" : " for " + escapedForTerminal(a.search)) << ")\n";
    return 0;
}

int runInstall(const ArgosCommand& a, const attnlab::ArgosOptions& options) {
    const std::vector<attnlab::ArgosPackageEntry> index = attnlab::fetchArgosIndex(options);
    const attnlab::ArgosPackageEntry& entry = attnlab::findArgosEntry(index, a.name, options.index_url);
    std::string dir;
    {
        DownloadProgressLine line;
        const attnlab::HubProgressCallback shown = line.callback();
        bool announced = false;  // once the checks passed and the download begins
        const auto progress = [&](const attnlab::HubProgress& p) {
            if (!announced)
                std::cerr << "getting " << escapedForTerminal(entry.code) << " "
                          << escapedForTerminal(entry.package_version) << " (" << escapedForTerminal(entry.from_name)
                          << " → " << escapedForTerminal(entry.to_name) << ")\n";
            announced = true;
            return shown(p);
        };
        dir = attnlab::installArgosPackage(entry, options, progress, a.replace);
    }
    std::cout << "installed " << escapedForTerminal(entry.pair()) << " (" << escapedForTerminal(entry.from_name)
              << " → " << escapedForTerminal(entry.to_name) << ", version "
              << escapedForTerminal(orDash(entry.package_version)) << ") into " << escapedForTerminal(dir) << "\n";
    return 0;
}

}  // namespace

int runArgos(const ArgosCommand& a) {
    const attnlab::ArgosOptions options = attnlab::argosOptionsFromEnvironment();
    if (a.list->parsed()) return runList(a, options);
    if (a.install->parsed()) return runInstall(a, options);
    const std::string removed = attnlab::removeArgosPackage(a.name, options);
    std::cout << "removed " << escapedForTerminal(removed) << "\n";
    return 0;
}

}  // namespace attnlab_cli
