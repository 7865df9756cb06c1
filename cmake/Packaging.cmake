# The Debian package (issue 16 item 7): `cpack -G DEB` in a build tree gives
# rdzvscope_<version>_<arch>.deb with exactly what `cmake --install` installs: the CLI (the
# BPF object of `attach` is compiled into it), the shim, the SPANK plugin where it was built,
# the trace-format header with the CMake package config, the man pages and the examples.
#
# The package installs under CMAKE_INSTALL_PREFIX, the prefix the tree was configured with,
# because two paths are compiled in for it (the SPANK plugin's default shim=, and the shim
# directory the CLI tries beside bin/): a package built for another prefix would name files
# that are not where it puts them. A Debian package is therefore built from a tree configured
# with -DCMAKE_INSTALL_PREFIX=/usr (docs/building.md); the default /usr/local gives a
# package for /usr/local.
set(CPACK_PACKAGE_NAME rdzvscope)
set(CPACK_PACKAGE_VENDOR "rdzvscope")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "diagnoses PyTorch c10d/TCPStore rendezvous failures")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PACKAGE_CONTACT "rdzvscope maintainers <rdzvscope@localhost>" CACHE STRING
    "The Maintainer field of the .deb")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${CPACK_PACKAGE_CONTACT})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)        # rdzvscope_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# dpkg's long description, under the summary line above (CPack puts that first and indents
# this).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"rdzvscope records what every process of a PyTorch distributed job does on the
network while it rendezvouses (an LD_PRELOAD shim, or eBPF probes attached to a
running job) and names the failure class and the rank where it began.")
# Depends from the ELF files themselves (dpkg-shlibdeps; on Debian 12 libbpf1, zlib1g, libfmt9,
# libspdlog1.10-fmt9, libstdc++6, libgcc-s1, libc6: libelf comes with libbpf1, nothing links it
# directly), not a hand-kept list that goes stale when a link changes.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Stripped, as Debian ships binaries (the BPF object is data inside the CLI: untouched); a
# RelWithDebInfo CLI is ~85 MB with its debug info, 3.5 MB without.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)        # xz saves little here and costs CI seconds
# cpack packages what the tree has built: it runs the `preinstall` target, which otherwise
# builds `all` first (every test and benchmark: minutes on a CI machine, for files the package
# never holds). `cmake --build` first, as the recipe does; a file not built stops cpack with
# the install step's "cannot find" error. (The same goes for `make install`; `cmake --install`
# never builds anyway.)
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
