/* walker_lib.c - a library the walker's churn target loads and unloads. */
int walker_lib_value(void);
int walker_lib_value(void)
{
	return 42;
}
