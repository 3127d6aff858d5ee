include $(sort $(wildcard $(BR2_EXTERNAL_LOCKSTUDY_PATH)/package/*/*.mk))
