################################################################################
#
# lockstudy-dbench
#
################################################################################

# The release Debian 12 ships (dbench 4.0-2.1), so both recipes run the same dbench.
LOCKSTUDY_DBENCH_VERSION = 4.0
LOCKSTUDY_DBENCH_SOURCE = dbench-$(LOCKSTUDY_DBENCH_VERSION).tar.gz
LOCKSTUDY_DBENCH_SITE = https://www.samba.org/ftp/tridge/dbench
LOCKSTUDY_DBENCH_LICENSE = GPL-3.0
LOCKSTUDY_DBENCH_LICENSE_FILES = COPYING
LOCKSTUDY_DBENCH_DEPENDENCIES = popt
LOCKSTUDY_DBENCH_AUTORECONF = YES

# Only the program: its documentation target needs xsltproc.
define LOCKSTUDY_DBENCH_BUILD_CMDS
	$(TARGET_MAKE_ENV) $(MAKE) -C $(@D) dbench
endef

define LOCKSTUDY_DBENCH_INSTALL_TARGET_CMDS
	$(INSTALL) -m 0755 -D $(@D)/dbench $(TARGET_DIR)/usr/bin/dbench
	if [ -f $(@D)/loadfiles/client.txt ]; then \
		$(INSTALL) -m 0644 -D $(@D)/loadfiles/client.txt $(TARGET_DIR)/usr/share/dbench/client.txt; \
	else \
		$(INSTALL) -m 0644 -D $(@D)/client.txt $(TARGET_DIR)/usr/share/dbench/client.txt; \
	fi
endef

$(eval $(autotools-package))
