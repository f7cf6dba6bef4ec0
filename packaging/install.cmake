# `cmake --install` (GNUInstallDirs) and the Debian package (CPack's DEB generator).
# docs/operations.md, "Install", lists what goes where. A package build sets the prefix /usr
# and the configuration directory /etc (scripts/package.sh); the defaults, /usr/local and
# /usr/local/etc, suit an install by hand.

install(TARGETS livegate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/static/ DESTINATION ${CMAKE_INSTALL_DATADIR}/livegate/static)
install(FILES ${CMAKE_SOURCE_DIR}/config/livegate.json
        DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/livegate)
install(FILES ${CMAKE_SOURCE_DIR}/docs/livegate.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        PATTERN livegate.8 EXCLUDE)

# The systemd unit names the installed binary and configuration.
configure_file(${CMAKE_SOURCE_DIR}/packaging/livegate.service.in
               ${CMAKE_BINARY_DIR}/livegate.service @ONLY)
set(LG_SYSTEMD_UNIT_DIR lib/systemd/system CACHE STRING
    "where the unit goes, relative to the prefix (/usr/lib/systemd/system in the package)")
install(FILES ${CMAKE_BINARY_DIR}/livegate.service DESTINATION ${LG_SYSTEMD_UNIT_DIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME livegate)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "live-update gateway: SSE, WebSocket and long-poll")
set(CPACK_PACKAGE_DESCRIPTION
    "livegate serves events published on its control port to browsers over Server-Sent Events, WebSocket and long-poll, with per-topic history and resume. The package runs it as the system user livegate under the systemd unit livegate.service, configured by /etc/livegate/livegate.json.")
set(CPACK_PACKAGE_CONTACT "livegate maintainers <livegate@localhost>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Libraries from dpkg-shlibdeps (dpkg-dev); libwebsockets loads its libev plugin with dlopen,
# which no ELF header names; the maintainer scripts run useradd (passwd) and the unit's
# ExecReload /bin/kill (procps).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libwebsockets-evlib-ev, passwd, procps")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/debian/conffiles ${CMAKE_SOURCE_DIR}/packaging/debian/postinst
    ${CMAKE_SOURCE_DIR}/packaging/debian/prerm ${CMAKE_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
