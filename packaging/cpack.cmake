# CPack settings, for archives of the installed files (cpack -G TGZ).  The
# Debian package is built by packaging/deb.sh instead (compressed man pages,
# copyright and changelog, Depends from dpkg-shlibdeps, lintian-clean), from
# the packaging files in packaging/debian/.  A CPack .deb still works:
#   cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release
#   cmake --build build/release && (cd build/release && cpack -G DEB)
set(CPACK_PACKAGE_NAME aheadfs)
set(CPACK_PACKAGE_VENDOR "aheadfs")
set(CPACK_PACKAGE_CONTACT "aheadfs developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
	"FUSE passthrough with its own page cache and context readahead")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fuse3, libfuse3-3 (>= 3.14), liburcu8")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
