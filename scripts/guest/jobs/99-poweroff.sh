#!/bin/bash
sudo systemctl poweroff
