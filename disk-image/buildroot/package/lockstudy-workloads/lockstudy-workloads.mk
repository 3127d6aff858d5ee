################################################################################
#
# lockstudy-workloads
#
################################################################################

# The sources are the project's own workloads/ directory, next to disk-image/.
LOCKSTUDY_WORKLOADS_VERSION = local
LOCKSTUDY_WORKLOADS_SITE = $(BR2_EXTERNAL_LOCKSTUDY_PATH)/../../workloads
LOCKSTUDY_WORKLOADS_SITE_METHOD = local
LOCKSTUDY_WORKLOADS_LICENSE = GPL-2.0

# The same Makefile targets as the Debian-package recipe (lockstudy/image.py):
# `make` builds the static programs, `make install DESTDIR=...` installs them.
define LOCKSTUDY_WORKLOADS_BUILD_CMDS
	$(TARGET_MAKE_ENV) $(MAKE) $(TARGET_CONFIGURE_OPTS) -C $(@D) O=$(@D)/out
endef

define LOCKSTUDY_WORKLOADS_INSTALL_TARGET_CMDS
	$(TARGET_MAKE_ENV) $(MAKE) $(TARGET_CONFIGURE_OPTS) -C $(@D) O=$(@D)/out \
		DESTDIR=$(TARGET_DIR) install
endef

$(eval $(generic-package))
