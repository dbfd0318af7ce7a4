/* speed_data.h — `pdl speed --data`: the lazy JPEG path's decode rate and the step's wait for data
 * (cmd_speed_data.c). Returns the exit status. */
#ifndef PDL_SPEED_DATA_H
#define PDL_SPEED_DATA_H
int speed_data(const char *spec, const char *netname, int B, int threads, int decoders, double window_s);
#endif
